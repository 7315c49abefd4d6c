#!/bin/bash
#BSUB -M 2G
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
