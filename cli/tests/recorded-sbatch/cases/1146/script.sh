#!/bin/bash
#BSUB -M 2000000
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
