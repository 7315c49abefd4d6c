#!/bin/bash
#BSUB -n 4
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
